"""The lexicon of :mod:`.chinese_names`: suffixes, surnames, function characters, generic words and roles.

Closed classes of Chinese grammar and morphology (prepositions, measure words, head nouns of organizations
and places, surnames, kinship and role nouns), not names: nothing here comes from a benchmark's text.
"""

from __future__ import annotations

import re


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# -------------------------------------------------------------------------------------------- lexicons
_ORGANIZATION_SUFFIXES = _split(
    "大学 学院 中学 小学 书院 研究所 研究院 研究中心 实验室 博物馆 美术馆 图书馆 纪念馆 科技馆 公司 集团 "
    "银行 医院 基金会 协会 学会 委员会 资本 证券 保险 信托 法院 检察院 出版社 报社 日报 晚报 周刊 杂志社 通讯社 "
    "电视台 卫视 政府 事务所 俱乐部 剧院 乐团 酒店"
)
_LOCATION_SUFFIXES = _split("沙漠 海峡 半岛 高原 平原 盆地 群岛 山脉 自治区 遗址 保护区 风景区 景区 湿地")
_PLACE_CHARS = "省市县区镇乡村港山湖岛路街湾峰"
_ORGANIZATION_CHARS = "厂局厅"  # one-character heads of organizations: 金陵机械厂, 广州市规划局  # one-character place heads: 临川市, 白露湖, 长安路
_PROJECT_SUFFIXES = _split("计划 项目 工程")
_SHIP_CUES = "船轮舰艇"
# What follows a suffix and makes it a different word: 大学生 is a student, 公司法 a law.
_BAD_CONTINUATIONS = {
    "大学": "生", "公司": "法", "银行": "家卡", "项目": "组", "计划": "书", "工程": "师院局部", "科技": "馆园城",
    "政府": "工",
}  # fmt: skip
# Characters that never sit inside a name here: prepositions, conjunctions, particles, demonstratives,
# measure words.  A name scanned back from its suffix stops at them.
_STOP_CHARS = frozenset(
    "于在与和及或同跟向从对被由把将为给让使以是的了着过之其该这那此每各本全某所个家位座名条批种些届次已曾也都并而就还又再到往赴至"
)
_PREPOSITION_CHARS = frozenset("于在与和向从对被由同跟")
_NOT_IN_PERSON_NAMES = frozenset("于在与和及或的了着是该这那")
# Verbs that take an organization or place as object (担任X, 调任X); common verbs are caught by frequency.
_OBJECT_VERBS = frozenset(
    _split(
        """担任 调任 进入 加入 创办 成立 来自 前往 位于 设在 毕业 就职 就读 任职 收购 起诉 领导 管理 访问 离开
        参观 考察 捐赠 投资 签约 入职 供职 转入 调往 派往 借调 留学 攻读 返回 回到 抵达 到达 代表 出席 参加 合并
        并购 加盟 隶属 属于 联合 支持 资助 赞助 委托 邀请 批准 分配 飞往 赶赴 来到 途经"""
    )
)
# After these a name is a place (抵达拉萨: jieba says nr).
_PLACE_VERBS = frozenset(
    _split("抵达 到达 前往 来到 飞往 赶赴 回到 返回 途经 访问 位于 地处 路过 定居 来自 移居 迁居")
)
# One-character prepositions of direction: 成都至拉萨, 飞往 is a verb above.
_TOWARDS_CHARS = frozenset("至到往赴抵")
# Verbs of holding an office: 曾任青禾县县长 is 曾任 + 青禾县, not the name 曾任青.
_TENURE_VERBS = frozenset(_split("曾任 现任 出任 兼任 历任 就任 继任 升任 改任 转任 调任 担任 时任 原任"))
# Nouns that name a role, a part of an organization or a generic thing: never keys on their own.
GENERIC_WORDS = frozenset(
    _split(
        """总部 项目 计划 工程 工程师 研究 现任 所长 大学 学院 公司 集团 银行 医院 研究所 研究院 博物馆 基金会
        馆长 院长 校长 董事长 总经理 经理 主任 教授 博士 硕士 学生 创始人 负责人 主持人 合伙人 首席 科学家 导师
        家乡 省会 分公司 子公司 母公司 本市 本省 本县 全市 全省 分行 分所 学校 该校 毕业 工作 合作 协议 方案 报告 部门 机构 单位 团队 成员 人员 员工
        同事 领导 老师 专家 学者 记者 作者 天文学家 首席科学家 总裁 副总裁 董事 股东 市中心 境内 当地 本地 全国
        各地 东南 东北 西南 西北 东部 西部 南部 北部 中部 海洋 古城 城市 乡村 农村 山区 沿海地区 交汇处 远洋货轮 科考船 破冰船 探险队
        全球 全世界 世界 规模 故事 工厂 海军 陆军 空军 政府 附近 期间 情况 办公室 办事处 分部"""
    )
)
# Words jieba's dictionary tags ns (a place) that are common words, with the tag they take instead: nouns
# (n: a topic unless generic), verbs (v) and adjectives or adverbs (a, d: no key).  Read off the 761 ns words
# it counts at least 300 times (and 湖畔, 湖水, 滨水 below that); ambiguous ones stay places (天门 the city,
# 中山, 朝阳, 安宁, 汉堡, 中原, 江南).  As places they were "named" keys: a question saying 上市 or 城市 had an
# entity to match.
JIEBA_NOT_PLACES: dict[str, str] = {
    **dict.fromkeys(
        _split(
            """平原 海洋 湖泊 高原 山区 山脉 海峡 河口 冰川 大海 山坡 河谷 山河 山洞 海湾 湖水 江水 河水 大洋 山峰
            深山 江河 泉水 大河 大湖 大江 池塘 海滨 湖区 海滩 滨海 沧海 海港 山林 山川 台地 深海 深谷 山岭 余脉
            深水 河湾 江流 海岛 深渊 河畔 湖畔 大山 三角洲 山口 城堡 古城 古都 重镇 都城 京城 城镇 城市 都市 新城
            内城 商城 大街 南路 中路 西路 东路 北路 石桥 大桥 天桥 路桥 新村 城垣 故城 大城 城南 城西 西门 南门
            北门 东门 山寨 入口 大门口 井口 庙里 河里 江中 沿河 滨水 东西 英雄 朝廷 哥哥 阿哥 二哥 太阳 江湖 王国
            共和国 庆典 深度 长度 广度 治安 大国 山水 琉璃瓦 古典 阴阳 江山 福利 日志 青春 莲蓬 桥头堡 法西斯
            上半场 中密度 契约 金牙 伦理 法典 黄沙 西瓜 贵宾 嘉宾 屯田 北风 礼拜 山羊 青竹 中堂 朝野 象牙 上铺
            台风 黄连 诸国 诸州 城池 山门"""
        ),
        "n",
    ),
    **dict.fromkeys(
        _split(
            """爱国 开国 建国 上市 回国 长大 普及 上马 云集 新建 中断 关联 上山 兴国 下山 入市 广布 上台 渡江 治国
            加盟 登山 密封 上门 卫国 入海 赞美 喜庆 登极 归国 渡河 入门 上岗 入川 上路"""
        ),
        "v",
    ),
    **dict.fromkeys(_split("美丽 新鲜 神圣 广义 莫大 兴旺 白嫩 千古 如林"), "a"),
    **dict.fromkeys(_split("莫非 立马"), "d"),
}
# The generic words a name never reaches over when scanned back (现任青岚计划 is 青岚计划): roles, not heads
# (大学 of 白鹭大学附属医院) nor places (海洋 of 远澜海洋研究院).
_ROLE_WORDS = GENERIC_WORDS - frozenset(
    _split(
        """大学 学院 公司 集团 银行 医院 研究所 研究院 博物馆 基金会 项目 计划 工程 海洋 古城 城市 乡村 农村 山区
        沿海地区 市中心 境内 当地 本地 全国 各地 东南 东北 西南 西北 东部 西部 南部 北部 中部 交汇处
        全球 全世界 世界 规模 故事 工厂 海军 陆军 空军 政府 附近 期间 情况 办公室 办事处 分部"""
    )
)
# The ~120 commonest: only these start a name jieba did not see (安备, 官网, 原标题 are not names).
_COMMON_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蔡蒋余杜叶程魏苏吕丁任沈姚卢姜崔钟"
    "谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢"
)
# Rarer surnames join a given name only where jieba itself tagged the character a name (芮/nr 晴川).
_RARE_SURNAMES = frozenset(
    "安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝"
    "路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿"
    "桂全佟应臧闵苟邬边卞姬师仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝官封谈匡鞠惠荆乐冀郁胥南班储原栗"
    "燕楚鄢劳谌奚皮粟冼蔺楼盘满闻厉伊仝郜阚花权强帅屠豆朴盖练廉禹井祖漆巴丰支卿狄平计索宣晋相初门云容敬扈晁芮"
)
_COMPOUND_SURNAMES = _split(
    "欧阳 司马 诸葛 上官 慕容 东方 公孙 令狐 皇甫 司徒 夏侯 长孙 宇文 尉迟 钟离 端木 独孤 南宫 西门 百里"
)
# A given name is rare as a dictionary word; 速度, 水平 after 高 are not names.
_GIVEN_NAME_MAX_FREQ = 1500
_COMMON_VERB_FREQ = 2000  # a verb this frequent ends a name scanned back from its suffix
_ONE_CHARACTER_VERB_FREQ = 100_000  # 是 797k, 有 424k, 说 220k, 来 162k, 要 157k, 去 123k; not 可 96k
_GENERIC_PREFIX_FREQ = 3000  # 社区医院, 科技公司: a frequent common noun alone is not a name
_PLACE_HEAD_WORD_FREQ = 1000  # 地区, 社区: the last character and the place head form a common word
_PLACE_PREFIX_MAX_FREQ = 500  # 人生路: a place's own name is rarely a common word
_GOVERNMENT_ENDS = tuple("部局厅署委")
_PLACE_SIDE_RE = re.compile("(?:畔|边|旁|一带|附近|沿岸)$")  # 黄浦江畔 is 黄浦江
_HAN_RE = re.compile(r"[\u3400-\u9fff]")


_ROLE_HEADS = frozenset("局部厅处科院校所馆社会市县省镇村乡区股组队班团行店厂司船舰机家连营排旅军")
# Kinship and companions: about anyone, so edges to everything.
_KINSHIP = frozenset(
    _split(
        """父亲 母亲 父母 儿子 女儿 妻子 丈夫 家人 亲人 兄弟 姐妹 哥哥 姐姐 弟弟 妹妹 祖父 祖母 爷爷 奶奶 外公 外婆
        孩子 子女 夫妇 夫妻 同学 同伴 伙伴 朋友 邻居 队伍 团队 人们 群众"""
    )
)
# Two-character role nouns whose last character is also that of ordinary words (国家, 人生, 先天): closed lists.
_ROLE_JIA = frozenset(
    _split("画家 作家 专家 商家 玩家 卖家 买家 藏家 行家 名家 赢家 庄家 厂家 店家 东家 管家 书家")
)
_ROLE_SHENG = frozenset(_split("医生 学生 新生 师生 先生 门生 书生 男生 女生"))
# 博士生, 实习生.  Not 研究生, 运动员, 考生: what exam and sports news are about (rgb-zh lost questions on
# 考研 and on the world cup's 阿根廷队 when they were dropped).
_STUDENTS = frozenset(_split("士生 习生"))
_ROLE_ENDS = tuple("师者员")  # 教师 律师 记者 患者 学者 演员 官员: the suffix of a person doing something
_ROLE_ENDS_LONG = ("师", "家", "者", "人员", "工人", "手")  # 物理学家, 收藏家, 志愿者, 研究人员, 歌手


def is_role(word: str) -> bool:
    """A noun naming a kind of person (画家, 物理学家, 患者, 父亲): about anyone, never a key.

    By morphology: the agent suffixes 师/家/者/手 on a word of three characters or more, 师/者/员 on two,
    a two-character X人 (病人, 商人, 诗人), and the closed lists above for 家, 生 and kinship."""
    if len(word) < 2:
        return False
    if word in _KINSHIP or word in _ROLE_JIA or word in _ROLE_SHENG:
        return True
    if len(word) == 2:
        return word.endswith(_ROLE_ENDS) or word[1] == "人" or (word[1] == "长" and word[0] in _ROLE_HEADS)
    return word.endswith(_ROLE_ENDS_LONG) or word[-2:] in _STUDENTS


def is_generic(word: str) -> bool:
    """A word that is never a key on its own: a role (所长, 局长), a suffix alone (大学, 图书馆), 总部…"""
    return (
        word in GENERIC_WORDS or word in _ORGANIZATION_SUFFIXES or word in _LOCATION_SUFFIXES or is_role(word)
    )
